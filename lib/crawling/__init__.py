"""The Mercari crawler: a browser driver, page fetching, the browser manager and proxies."""
