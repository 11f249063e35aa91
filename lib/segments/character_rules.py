"""What an IP's character list may hold, wherever it comes from (the command line, the API, an import file).

Each name and alias is text of 1 to ``NAME_MAX_LENGTH`` characters without control characters, kept as typed.
The rest is about the matcher, which reads every name and alias in its folded spelling (``normalize.fold``:
any width, script or case; ``ゴジョウ``, ``ｺﾞｼﾞｮｳ`` and ``ごじょう`` are one word): a word it folds to
nothing with a letter or a digit in it (``!!!``, ``🔥``) could never be found, and two that fold alike (a name
given twice, ``Gojo`` and ``gojo``, an alias shared by two characters, an alias repeating its own name) could not
be told apart, so both are refused (``MatcherConflict``), naming the entries.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from lib.segments.characters import Character
from lib.segments.normalize import fold
from models.character import CHARACTER_NAME_MAX_LENGTH

#: Longest name or alias (the column's size).
NAME_MAX_LENGTH = CHARACTER_NAME_MAX_LENGTH
#: Most aliases one character may have, and most characters one IP may have: lists an operator keeps by hand
#: stay far below, and the matcher compiles every word of a list into one expression.
MAX_ALIASES = 50
MAX_CHARACTERS = 500
#: ``check_word``'s rule on control characters as a pattern of the OpenAPI document: no C0, DEL or C1 character
#: (Unicode category Cc). As JSON Schema reads it, ``$`` is the end of the text (Python's ``\Z``).
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f-\x9f]*$"


class CharacterListError(ValueError):
    """A character or a list of them that cannot be stored as given; the message names the entry and why."""


class MatcherConflict(CharacterListError):
    """Well-formed text the matcher cannot use: a word it folds to nothing findable, or two words it folds
    alike."""


def check_word(word: object, what: str) -> str:
    """``word`` (a name or an alias, ``what`` says which, for the message) as given, or a refusal."""
    if not isinstance(word, str):
        raise CharacterListError(f"{what} must be text; got {type(word).__name__}")
    if not word:
        raise CharacterListError(f"{what} is empty")
    if len(word) > NAME_MAX_LENGTH:
        raise CharacterListError(f"{what} is {len(word)} characters long; at most {NAME_MAX_LENGTH} are allowed")
    for i, c in enumerate(word):
        kind = unicodedata.category(c)
        if kind == "Cc":
            raise CharacterListError(f"{what} contains control characters (U+{ord(c):04X} at position {i + 1}; "
                                     f"tabs, new lines, NUL… are refused)")
        if kind == "Cs":
            raise CharacterListError(f"{what} is not valid Unicode (U+{ord(c):04X} at position {i + 1}: was it "
                                     f"typed in another encoding than UTF-8?)")
    if not any(c.isalnum() for c in fold(word)):  # blank too
        raise MatcherConflict(f"{what} has no letter or digit the matcher reads, so no title could name it")
    return word


def check_character(name: object, aliases: object, where: str = "") -> Character:
    """One character, its words checked (``check_word``) and none folding like another of its own; ``where``
    prefixes the messages (e.g. "entry 3: ")."""
    name = check_word(name, f"{where}the name {name!r}" if isinstance(name, str) else f"{where}the name")
    if not isinstance(aliases, list | tuple) or isinstance(aliases, str):
        raise CharacterListError(f"{where}the aliases of {name!r} must be a list of text")
    if len(aliases) > MAX_ALIASES:
        raise CharacterListError(f"{where}{name!r} has {len(aliases)} aliases; at most {MAX_ALIASES} are allowed")
    seen = {fold(name): f"its name {name!r}"}
    for i, alias in enumerate(aliases):
        what = f"{where}alias {i + 1} of {name!r}"
        check_word(alias, f"{what} ({alias!r})" if isinstance(alias, str) else what)
        key = fold(alias)
        if key in seen:
            raise MatcherConflict(f"{what} ({alias!r}) is the same word as {seen[key]} to the matcher "
                                  f"(both read {key!r})")
        seen[key] = f"its alias {alias!r}"
    return Character(name, tuple(aliases))


def check_list(characters: Iterable[tuple[object, object]], numbered: bool = True) -> list[Character]:
    """A whole list, each character checked (``check_character``) and no word of one folding like a word of
    another. Messages name each entry by its number ("entry 3: ", counting from 1) when ``numbered``, else by
    its name alone."""
    checked: list[Character] = []
    owner: dict[str, str] = {}  # folded word → which word of which character it is
    for i, (name, aliases) in enumerate(characters):
        if i >= MAX_CHARACTERS:
            raise CharacterListError(f"more than {MAX_CHARACTERS} characters: at most {MAX_CHARACTERS} are "
                                     f"allowed per IP")
        where = f"entry {i + 1}: " if numbered else ""
        character = check_character(name, aliases, where)
        for word in (character.name, *character.aliases):
            key = fold(word)
            this = _which(word, character.name)
            if key in owner:
                raise MatcherConflict(f"{where}{this} is the same word to the matcher as {owner[key]} (both read "
                                      f"{key!r}): a word may name one character")
            owner[key] = this + (f" (entry {i + 1})" if numbered else "")
        checked.append(character)
    return checked


def _which(word: str, name: str) -> str:
    return f"the name {name!r}" if word == name else f"the alias {word!r} of {name!r}"


def merged(characters: Sequence[Character], name: str, aliases: Sequence[str]) -> tuple[list[Character], bool]:
    """``characters`` with ``name`` added at the end, or, when one of them has that name (as the matcher reads
    it), with those of ``aliases`` it lacks added to its own; and whether anything changed. The result is
    checked whole (``check_list``): a word another character uses is refused."""
    character = check_character(name, list(aliases))  # its own words checked before they are compared
    key = fold(character.name)
    result: list[Character] = []
    changed = True
    for listed in characters:
        if key and fold(listed.name) == key:
            known = {fold(w) for w in (listed.name, *listed.aliases)}
            new = tuple(a for a in character.aliases if fold(a) not in known)
            changed = bool(new)
            listed = Character(listed.name, (*listed.aliases, *new))
            key = ""  # found: nothing to add at the end
        result.append(listed)
    if key:
        result.append(character)
    changing = next(c for c in result if fold(c.name) == fold(character.name))
    # checked with the character changed last, so that a clash is told of its new word
    check_list([*(c for c in result if c is not changing), changing], numbered=False)
    return result, changed
