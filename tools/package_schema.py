"""The component package's schema, as its plugin serves it over GetSchema, written to a file: what
tools/sdkgen generates the consumer examples' SDKs from (`make consumers`).

    python -m tools.package_schema build/sdks/schema.json

tests/provider/test_main.py checks that the plugin's GetSchema answers this very schema.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from components.package import package_provider


def schema_text() -> str:
    """The schema as JSON text, indented for a reader (the plugin serves it on one line)."""
    provider = package_provider()
    return json.dumps(json.loads(provider.schema or "{}"), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="the schema file to write")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(schema_text())


if __name__ == "__main__":
    main()
