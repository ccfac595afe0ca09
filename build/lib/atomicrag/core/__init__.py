"""The bottom layer: configuration (dataclasses, checks, the Hydra composer), registries, data records,
artifacts, progress, and facts about the machine (CPU features, offline model files).

Everything else imports from here; nothing here imports a stage, a service or a face.
"""
