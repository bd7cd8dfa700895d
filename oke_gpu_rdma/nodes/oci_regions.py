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
import re
from dataclasses import dataclass
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


# --- OCIDs ---------------------------------------------------------------------------------------

# Oracle's "Resource Identifiers": ocid1.<RESOURCE TYPE>.<REALM>.[REGION][.FUTURE USE].<UNIQUE ID>; the
# realm is oc1 (commercial), oc2, oc3, ... ; the region field is empty for tenancy-wide resources.
_OCID = re.compile(
    r"^ocid1\.(?P<kind>[a-z0-9]+)\.(?P<realm>oc[0-9]+)\.(?P<region>[a-z0-9-]*)(?:\.[a-z0-9-]*)?\.[a-z0-9]+$"
)


@dataclass(frozen=True)
class Ocid:
    """The fields of an OCID: its resource type (`kind`), realm and region (None when tenancy-wide)."""

    kind: str
    realm: str
    region: str | None


def parse_ocid(text: str) -> Ocid | None:
    """The fields of ``text`` when it has the OCID format, else None."""
    match = _OCID.match(text)
    if match is None:
        return None
    return Ocid(match["kind"], match["realm"], match["region"] or None)


def ocid_region(ocid: str) -> str | None:
    """The region field of an OCID; None for tenancy-wide OCIDs (empty field) or text that is no OCID."""
    parsed = parse_ocid(ocid)
    return parsed.region if parsed is not None else None


def ocid_in_region(ocid: str, region: str) -> bool:
    """Whether a regional OCID belongs to ``region`` (tenancy-wide OCIDs belong to every region)."""
    found = ocid_region(ocid)
    return found is None or _same_region(found, region)


# --- availability domains ---------------------------------------------------------------------------

# Regions with three availability domains; every other region has one. Oracle, "Regions and Availability
# Domains" (docs.oracle.com/iaas/Content/General/Concepts/regions.htm): the regions table's availability
# domain count, and "we have chosen to launch regions in new geographies with one availability domain".
THREE_AD_REGIONS: Final = frozenset(
    {"us-ashburn-1", "us-phoenix-1", "us-chicago-1", "eu-frankfurt-1", "uk-london-1"}
)
# How AD names spell the region: the upper-case region identifier (`EU-FRANKFURT-1-AD-1`), except the two
# oldest regions, named before region identifiers had their number: `US-ASHBURN-AD-1` and `PHX-AD-1`
# (`oci iam availability-domain list` in each).
_AD_REGION_PARTS: Final = {"us-ashburn-1": "US-ASHBURN", "us-phoenix-1": "PHX"}
# `<tenancy prefix>:<REGION>-AD-<n>`: the prefix is a few letters and digits, e.g. `Uocm`.
_AD = re.compile(r"^(?P<prefix>[A-Za-z0-9]+):(?P<region>[A-Za-z0-9-]+)-AD-(?P<n>[0-9]+)$")


def availability_domain_count(region: str) -> int:
    """How many availability domains ``region`` has (3 or 1)."""
    return 3 if region.lower() in THREE_AD_REGIONS else 1


def availability_domain_name(prefix: str, region: str, number: int) -> str:
    """The AD name OCI prints for AD ``number`` of ``region`` in a tenancy whose AD prefix is ``prefix``."""
    part = _AD_REGION_PARTS.get(region.lower(), region.upper())
    return f"{prefix}:{part}-AD-{number}"


def availability_domain_problem(availability_domain: str, region: str) -> str | None:
    """Why ``availability_domain`` is no AD of ``region`` (a known region), None when it is one."""
    count = availability_domain_count(region)
    match = _AD.match(availability_domain)
    prefix = match["prefix"] if match else "<prefix>"
    names = [availability_domain_name(prefix, region, n) for n in range(1, count + 1)]
    choices = names[0] if count == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"
    fix = f"use {choices} with your tenancy's prefix (oci iam availability-domain list)"
    if match is None:
        return f"is not an availability domain name (<prefix>:<REGION>-AD-<n>, e.g. {names[0]}); {fix}"
    if match["region"] != _AD_REGION_PARTS.get(region.lower(), region.upper()):
        if _same_region(match["region"], region):
            return f"spells the region as OCI does not; {fix}"
        return f"is not an availability domain of oci:region {region}; {fix}, or change oci:region"
    if match["n"] != str(int(match["n"])):
        return f"writes the AD number as OCI does not ({match['n']}); {fix}"
    if not 1 <= int(match["n"]) <= count:
        has = "has 1 availability domain" if count == 1 else f"has {count} availability domains"
        return f"names AD {int(match['n'])}, but {region} {has}; {fix}"
    return None


def availability_domain_region(availability_domain: str) -> str:
    """The region part of an AD name: `Uocm:US-ASHBURN-AD-1` -> `US-ASHBURN`."""
    name = availability_domain.rsplit(":", 1)[-1]
    return name.rsplit("-AD-", 1)[0] if "-AD-" in name else name


def availability_domain_in_region(availability_domain: str, region: str) -> bool:
    """Whether the availability domain lies in ``region``."""
    return _same_region(availability_domain_region(availability_domain), region)
