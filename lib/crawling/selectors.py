"""Everything the crawler knows about the search page's markup and block pages, in one place."""

CELL = 'li[data-testid="item-cell"]'
LINK = 'a[data-testid="thumbnail-link"]'
NAME = '[data-testid="thumbnail-item-name"]'
PRICE = ".merPrice"
SOLD_STICKER = '[data-testid="thumbnail-sticker"][aria-label="売り切れ"]'
IMAGE_LABEL = '[role="img"][aria-label]'
MODAL_SCRIM = '[data-testid="merModalBaseScrim"]'
NO_RESULTS_TEXT = "出品された商品がありません"

ITEM_HREF = r"^/item/(m\d+)"
SHOPS_HREF = r"^/shops/product/([A-Za-z0-9]+)"
PRICE_IN_LABEL = r"([\d,]+)円"

#: Text of Cloudflare's block and challenge pages.
BLOCK_MARKERS = ("Just a moment", "Verify you are human", "Attention Required", "Sorry, you have been blocked",
                 "Too Many Requests", "cf-turnstile", "challenge-platform")

#: Requests never needed to read a search page.
BLOCKED_RESOURCE_TYPES = ("Image", "Font", "Media")
ANALYTICS_URL_PATTERNS = ("*google-analytics.com*", "*googletagmanager.com*", "*doubleclick.net*",
                          "*facebook.net*", "*analytics*", "*/collect?*")

ON_SALE_PARAM = "on_sale"
SOLD_PARAM = "sold_out|trading"
