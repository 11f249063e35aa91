"""Everything the crawler knows about the search page's markup, its API and block pages, in one place."""

CELL = 'li[data-testid="item-cell"]'
LINK = 'a[data-testid="thumbnail-link"]'
NAME = '[data-testid="thumbnail-item-name"]'
PRICE = ".merPrice"
SOLD_STICKER = '[data-testid="thumbnail-sticker"][aria-label="売り切れ"]'
IMAGE_LABEL = '[role="img"][aria-label]'
MODAL_SCRIM = '[data-testid="merModalBaseScrim"]'
#: Present only when the search has a next page (the real page renders no disabled one).
NEXT_BUTTON = 'a[data-testid="pagination-next-button"]'
#: In the raw HTML inside a <template>; only visible text counts (innerText skips templates).
NO_RESULTS_TEXT = "出品された商品がありません"

ITEM_HREF = r"^/item/(m\d+)"
SHOPS_HREF = r"^/shops/product/([A-Za-z0-9]+)"
PRICE_IN_LABEL = r"([\d,]+)円"

#: Items per search page (the page's own ``pageSize``): a page holds at most this many.
PAGE_SIZE = 120
#: A page with a next page holds at least this many. The site fills a page from ``PAGE_SIZE`` search hits and
#: then drops the listings it filters out of its pages: recorded answers of the real API hold 116 to 119 items
#: with a next page. A page that stopped rendering (a lazy load that never came: the first part alone is half a
#: page) is far below. The DOM path's completeness and the drift alert's fill both rest on it.
FULL_PAGE_MIN = PAGE_SIZE - 12
#: The price the site shows for a listing without a real one (with a no-price flag in the API), and that some
#: sellers set to mean "not for sale": never a price (docs/concepts/crawling.md, "Prices that are prices").
PLACEHOLDER_PRICE = 9_999_999
#: An API item's no-price flag: a true boolean field whose name matches this (``isNoPrice``, ``noPrice``, …).
NO_PRICE_FLAG = r"^(is_?)?no_?price$"

#: The search API's item fields the crawler reads, with the JSON type the site sends (numbers as strings).
API_ITEM_FIELDS = {"id": str, "name": str, "price": str, "status": str, "created": str, "updated": str,
                   "thumbnails": list, "itemType": str}
API_META_FIELDS = {"numFound": str, "nextPageToken": str}
API_ON_SALE = "ITEM_STATUS_ON_SALE"
API_SOLD = ("ITEM_STATUS_SOLD_OUT", "ITEM_STATUS_TRADING")
API_SHOPS_TYPE = "ITEM_TYPE_BEYOND"
#: The hit's seller (kept only as a keyed hash, lib/crawling/listings.py) and an auction's terms (a hit of an auction
#: carries this map: its ``id``, ``total_bids``, ``highest_bid``, ``state``…; its ``price`` is the current bid).
API_SELLER = "sellerId"
API_AUCTION = "auction_info"

#: Text of Cloudflare's block and challenge pages.
BLOCK_MARKERS = ("Just a moment", "Verify you are human", "Attention Required", "Sorry, you have been blocked",
                 "Too Many Requests", "cf-turnstile", "challenge-platform")

#: Requests never needed to read a search page.
BLOCKED_RESOURCE_TYPES = ("Image", "Font", "Media")
ANALYTICS_URL_PATTERNS = ("*google-analytics.com*", "*googletagmanager.com*", "*doubleclick.net*",
                          "*facebook.net*", "*analytics*", "*/collect?*")

ON_SALE_PARAM = "on_sale"
SOLD_PARAM = "sold_out|trading"
