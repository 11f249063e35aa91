"""lib/core"""
