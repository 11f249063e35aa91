"""Local stand-ins for outside systems, for tests and the demo, never used in production: the market
simulator, the fake export API."""
