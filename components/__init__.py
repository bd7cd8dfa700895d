"""The program's components. Importing them loads of the Pulumi SDKs only the modules they use
(components/sdk_modules.py), for `pulumi up` and `make preview` alike."""

from .sdk_modules import defer_sdk_packages

defer_sdk_packages()
