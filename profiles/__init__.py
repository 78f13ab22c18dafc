"""Profile defaults: one YAML file per profile, merged under the user's spec."""
