"""OCI regions: which region an availability domain or an OCID belongs to.

Regional OCIDs carry the region as their fourth field, as the region key (`iad`) for older regions or
the region name (`eu-frankfurt-1`) for newer ones: `ocid1.<type>.<realm>.<region>.<unique id>`;
tenancy-wide resources (compartments, IAM) leave it empty. Availability domain names end in
`<REGION>-AD-<n>` (`Uocm:US-ASHBURN-AD-1`, `Uocm:EU-FRANKFURT-1-AD-1`; Phoenix's is `PHX-AD-1`).
Sources: Oracle's "Regions and Availability Domains" and "Resource Identifiers" documentation; the key
table below is the OCI Python SDK's (oracle/oci-python-sdk `src/oci/regions_definitions.py`,
`REGIONS_SHORT_NAMES`, version 2.189.0).
"""

from __future__ import annotations

import difflib
from typing import Final

# Region name -> region key.
REGION_KEYS: Final[dict[str, str]] = {
    "af-casablanca-1": "lej",
    "af-johannesburg-1": "jnb",
    "ap-batam-1": "hsg",
    "ap-chiyoda-1": "nja",
    "ap-chuncheon-1": "yny",
    "ap-chuncheon-2": "bno",
    "ap-dcc-canberra-1": "wga",
    "ap-dcc-gazipur-1": "dac",
    "ap-delhi-1": "onm",
    "ap-hyderabad-1": "hyd",
    "ap-ibaraki-1": "ukb",
    "ap-kulai-2": "jbp",
    "ap-melbourne-1": "mel",
    "ap-mumbai-1": "bom",
    "ap-osaka-1": "kix",
    "ap-seoul-1": "icn",
    "ap-seoul-2": "dtz",
    "ap-singapore-1": "sin",
    "ap-singapore-2": "xsp",
    "ap-suwon-1": "dln",
    "ap-sydney-1": "syd",
    "ap-tokyo-1": "nrt",
    "ca-montreal-1": "yul",
    "ca-toronto-1": "yyz",
    "eu-amsterdam-1": "ams",
    "eu-budapest-1": "jsk",
    "eu-crissier-1": "avf",
    "eu-dcc-dublin-1": "ork",
    "eu-dcc-dublin-2": "snn",
    "eu-dcc-milan-1": "bgy",
    "eu-dcc-milan-2": "mxp",
    "eu-dcc-rating-1": "dus",
    "eu-dcc-rating-2": "dtm",
    "eu-dcc-zurich-1": "avz",
    "eu-frankfurt-1": "fra",
    "eu-frankfurt-2": "str",
    "eu-jovanovac-1": "beg",
    "eu-madrid-1": "mad",
    "eu-madrid-2": "vll",
    "eu-madrid-3": "orf",
    "eu-marseille-1": "mrs",
    "eu-milan-1": "lin",
    "eu-paris-1": "cdg",
    "eu-stockholm-1": "arn",
    "eu-turin-1": "nrq",
    "eu-zurich-1": "zrh",
    "il-jerusalem-1": "mtz",
    "me-abudhabi-1": "auh",
    "me-abudhabi-2": "rkt",
    "me-abudhabi-3": "ahu",
    "me-abudhabi-4": "shj",
    "me-alain-1": "rba",
    "me-alrayyan-1": "vve",
    "me-dcc-doha-1": "doh",
    "me-dcc-muscat-1": "mct",
    "me-dubai-1": "dxb",
    "me-ibri-1": "ibr",
    "me-jeddah-1": "jed",
    "me-riyadh-1": "ruh",
    "mx-monterrey-1": "mty",
    "mx-queretaro-1": "qro",
    "sa-bogota-1": "bog",
    "sa-riodejaneiro-1": "hnw",
    "sa-santiago-1": "scl",
    "sa-saopaulo-1": "gru",
    "sa-valparaiso-1": "vap",
    "sa-vinhedo-1": "vcp",
    "uk-cardiff-1": "cwl",
    "uk-gov-cardiff-1": "brs",
    "uk-gov-london-1": "ltn",
    "uk-london-1": "lhr",
    "us-ashburn-1": "iad",
    "us-ashburn-2": "yxj",
    "us-chicago-1": "ord",
    "us-gov-ashburn-1": "ric",
    "us-gov-chicago-1": "pia",
    "us-gov-phoenix-1": "tus",
    "us-langley-1": "lfi",
    "us-luke-1": "luf",
    "us-newark-1": "pgc",
    "us-phoenix-1": "phx",
    "us-saltlake-2": "aga",
    "us-sanjose-1": "sjc",
    "us-somerset-1": "ebb",
    "us-thames-1": "ebl",
}


def region_key(region: str) -> str | None:
    """The region key of ``region`` (``us-ashburn-1`` -> ``iad``), None if this table lacks it."""
    return REGION_KEYS.get(region.lower())


def is_known_region(region: str) -> bool:
    """Whether ``region`` is an OCI region identifier of the table above (`us-ashburn-1`)."""
    return region.lower() in REGION_KEYS


def unknown_region(region: str) -> str:
    """What to say of a region identifier the table lacks: that it is unknown, and the closest known one."""
    close = difflib.get_close_matches(region.lower(), REGION_KEYS, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]}?" if close else ""
    return (
        f"is not a known OCI region identifier{guess} (regions are named like us-ashburn-1: "
        "oci iam region list)"
    )


def _same_region(text: str, region: str) -> bool:
    text = text.lower()
    return text in (region.lower(), region_key(region)) or f"{text}-1" == region.lower()


def ocid_region(ocid: str) -> str | None:
    """The region field of an OCID; None for tenancy-wide OCIDs (empty field) or text that is no OCID."""
    parts = ocid.split(".")
    return parts[3] or None if len(parts) >= 5 and parts[0] == "ocid1" else None


def ocid_in_region(ocid: str, region: str) -> bool:
    """Whether a regional OCID belongs to ``region`` (tenancy-wide OCIDs belong to every region)."""
    found = ocid_region(ocid)
    return found is None or _same_region(found, region)


def availability_domain_region(availability_domain: str) -> str:
    """The region part of an AD name: `Uocm:US-ASHBURN-AD-1` -> `US-ASHBURN`."""
    name = availability_domain.rsplit(":", 1)[-1]
    return name.rsplit("-AD-", 1)[0] if "-AD-" in name else name


def availability_domain_in_region(availability_domain: str, region: str) -> bool:
    """Whether the availability domain lies in ``region``."""
    return _same_region(availability_domain_region(availability_domain), region)
