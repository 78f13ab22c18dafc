"""The paddlegen spec: pydantic models and the exported JSON Schema."""

from paddlegen.schema.models import PROFILES, SPEC_MODELS, TrainingSpec

__all__ = ["PROFILES", "SPEC_MODELS", "TrainingSpec"]
