"""Segments of an IP's listings: the goods type a title sells (``classify``) and the characters it names
(``match_characters``), both matched on one normalized spelling of the title (``normalize``). The goods types are
defined once, in the data file ``goods_types.toml`` (``taxonomy``)."""
