"""Parsers for driver and collector output."""
