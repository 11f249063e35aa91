"""lib/standins"""
