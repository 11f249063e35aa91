"""lib/messaging"""
