"""The dashboard and the versioned HTTP API (``animetop dashboard``): FastAPI served by uvicorn, pages rendered
from Jinja2 templates whose data come from ``/api/v1``, charts drawn by uPlot shipped in ``static/vendor``."""
