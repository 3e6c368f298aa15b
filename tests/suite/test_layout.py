from pathlib import Path

import pytest

from kernelproof.errors import UsageError
from kernelproof.suite.layout import bench_items, read_suite

TASK = (
    "import torch\nn = 4\nclass Model(torch.nn.Module):\n    pass\n"
    "def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"
)


def write(path: Path, text: str = TASK) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_kernelbench_layout_matches_by_level_and_problem_id(tmp_path):
    suite, solutions = tmp_path / "suite", tmp_path / "solutions"
    write(suite / "level1" / "1_Add.py")
    write(suite / "level1" / "2_Mul.py")
    write(suite / "level1" / "10_Div.py")
    write(suite / "level2" / "1_Fused.py")
    write(solutions / "level1" / "1_mine.py", "class ModelNew: pass\n")
    write(solutions / "level1" / "10" / "a.py", "class ModelNew: pass\n")
    write(solutions / "level1" / "10" / "b.py", "class ModelNew: pass\n")
    write(solutions / "level1" / "11_other.py", "class ModelNew: pass\n")  # no such task
    layout, tasks = read_suite(suite, solutions)
    assert layout == "kernelbench"
    assert [t.key for t in tasks] == [
        "level1/1_Add",
        "level1/2_Mul",
        "level1/10_Div",
        "level2/1_Fused",
    ]
    by_key = {t.key: t for t in tasks}
    assert [p.name for p in by_key["level1/1_Add"].candidates] == ["1_mine.py"]
    assert by_key["level1/2_Mul"].candidates == ()
    assert [p.name for p in by_key["level1/10_Div"].candidates] == ["a.py", "b.py"]
    items = bench_items(tasks)
    assert [(i.task.key, i.sample) for i in items] == [
        ("level1/1_Add", 0),
        ("level1/10_Div", 0),
        ("level1/10_Div", 1),
    ]


def test_gpumode_and_native_layouts(tmp_path):
    gpumode = tmp_path / "gpumode"
    write(gpumode / "sum" / "reference.py", "def ref_kernel(d): pass\ndef generate_input(): pass\n")
    write(gpumode / "sum" / "task.yml", "tests: []\n")
    write(gpumode / "sum" / "submission.py", "def custom_kernel(d): pass\n")
    layout, tasks = read_suite(gpumode, gpumode)
    assert layout == "gpumode" and [p.name for p in tasks[0].candidates] == ["submission.py"]
    native = tmp_path / "native"
    write(native / "softmax" / "reference.py")
    write(native / "softmax" / "fast.py", "class ModelNew: pass\n")
    layout, tasks = read_suite(native, native)
    assert layout == "native" and [p.name for p in tasks[0].candidates] == ["fast.py"]


def test_unknown_layout_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no known layout"):
        read_suite(tmp_path / "empty", tmp_path / "empty")
    with pytest.raises(UsageError, match="does not exist"):
        read_suite(tmp_path / "missing", tmp_path)
