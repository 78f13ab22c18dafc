"""The paddlegen spec: pydantic models and the exported JSON Schema."""

from paddlegen.schema.models import PROFILES, TrainingSpec

__all__ = ["PROFILES", "TrainingSpec"]
