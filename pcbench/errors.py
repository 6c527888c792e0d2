"""The error every config check raises, in a module of its own.

pcbench/config.py (the schemas and `check_config`) runs the rule tables of pcbench/rules.py,
and both raise ConfigError. Defining it here lets the import go one way only: config imports
rules, rules imports neither config nor anything that imports it.
"""


class ConfigError(ValueError):
    """A user-facing configuration mistake; the message is one line saying how to fix it."""
