"""animetop's logic: plain functions and classes, usable without a broker."""
