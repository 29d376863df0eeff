"""One module per lint rule; see kdt/lint/engine.py for the shape of a rule."""
