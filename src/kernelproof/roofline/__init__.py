"""Speed of light: the work a kernel must do, the ceilings of the machine, and the floor time.

Flow: :func:`count_work` gives a :class:`WorkCount`; :func:`ceilings_for` gives the machine's
:class:`~kernelproof.schema.report.Ceilings` (datasheet or calibration); :func:`roofline` combines
them with measured times into the report's :class:`~kernelproof.schema.report.Roofline`. Only
the compulsory bytes (outputs, and inputs every algorithm must read) bind the floor; the
reference's FLOPs are reported "against the reference's algorithm", as information.
"""

from kernelproof.roofline.calibration import (
    CalibrationRecord,
    MatmulMeasurement,
    attainable_peak,
    cache_dir,
    calibrate,
    ceilings_for,
    load_calibration,
)
from kernelproof.roofline.devices import (
    DEVICES,
    DTYPES,
    DeviceSpec,
    PeakFlops,
    canonical_dtype,
    find_device,
)
from kernelproof.roofline.fingerprint import fingerprint_fields, machine_fingerprint, parse_device
from kernelproof.roofline.floor import (
    floor_time,
    reference_algorithm_floor,
    roofline,
    sol_fraction,
)
from kernelproof.roofline.work import WorkCount, count_work

__all__ = [
    "DEVICES",
    "DTYPES",
    "CalibrationRecord",
    "DeviceSpec",
    "MatmulMeasurement",
    "PeakFlops",
    "WorkCount",
    "attainable_peak",
    "cache_dir",
    "calibrate",
    "canonical_dtype",
    "ceilings_for",
    "count_work",
    "find_device",
    "fingerprint_fields",
    "floor_time",
    "load_calibration",
    "machine_fingerprint",
    "parse_device",
    "reference_algorithm_floor",
    "roofline",
    "sol_fraction",
]
