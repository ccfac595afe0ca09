"""Prompt modules: one per prompt, each with TEMPLATE, VERSION, SCHEMA, build_messages and parse."""
