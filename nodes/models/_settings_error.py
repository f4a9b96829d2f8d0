"""The error of a model setting a user can fix, shared by the settings and the model providers."""


class SettingsError(ValueError):
    """A setting a user can fix; its message is one line: what, where, how to fix."""
