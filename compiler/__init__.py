"""paddlegen's compiler: loader, derivation, emitters, Kubernetes validation, writer and CLI."""
