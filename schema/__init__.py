"""The paddlegen spec: the models its profiles share, the grammars, the JSON Schema export."""
