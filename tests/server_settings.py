"""The settings of the dashboard processes the tests and benchmarks start (tests/daphne.py):
the production settings, with a password hash that costs microseconds first in the list
(PBKDF2's 1,000,000 rounds cost ~0.4 s of CPU per user made and per sign-in, on a machine
the tests share).  The production hashers stay after it, so a password that a command made
with them (``tabwright_init``) still signs in."""

from django.conf import global_settings

from dashboard.settings import *  # noqa: F403

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    *global_settings.PASSWORD_HASHERS,
]
