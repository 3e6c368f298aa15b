from kernelproof.config import resolve_settings
from kernelproof.schema import LayoutTransform, ValueTransform, VariantKind
from kernelproof.tasks.variants import plan_matrix, refitted


def test_default_group_has_seeds_values_and_layouts():
    settings = resolve_settings(overrides={"seeds": 5})
    groups = plan_matrix({"n": 64}, [], [11, 12, 13, 14, 15], settings)
    default = groups[0]
    assert default.is_default
    kinds = [v.kind for v in default.variants]
    assert kinds.count(VariantKind.SEED) == 5
    assert {v.value for v in default.variants if v.value} == set(ValueTransform)
    assert {v.layout for v in default.variants if v.layout} == set(LayoutTransform)


def test_shape_groups_cover_smaller_larger_odd_prime_and_one():
    settings = resolve_settings()
    groups = plan_matrix({"batch": 16, "dim": 64}, [{"dim": 7}], [1], settings)
    dims = {g.knobs["dim"] for g in groups[1:] if g.knobs["batch"] == 16}
    assert {32, 65, 61, 1, 128, 7} <= dims
    assert any(g.knobs == {"batch": 17, "dim": 65} for g in groups)  # everything odd at once
    assert len({tuple(sorted(g.knobs.items())) for g in groups}) == len(groups)  # no duplicates
    assert all(
        g.grows == any(g.knobs[k] > v for k, v in {"batch": 16, "dim": 64}.items()) for g in groups
    )


def test_fixed_shapes_profile_keeps_only_the_default():
    settings = resolve_settings(profile="kernelbench-compat")
    groups = plan_matrix({"n": 64}, [{"n": 3}], [1, 2], settings)
    assert len(groups) == 1
    assert {v.kind for v in groups[0].variants} == {VariantKind.SEED, VariantKind.REPEAT}


def test_quick_profile_keeps_only_declared_shapes():
    settings = resolve_settings(profile="quick")
    groups = plan_matrix({"n": 64}, [{"n": 7}, {"n": 1}], [1, 2], settings)
    assert [g.knobs["n"] for g in groups] == [64, 7, 1]
    # a task that declares no SHAPES still gets generated ones
    assert len(plan_matrix({"n": 64}, [], [1], settings)) > 1


def test_knobs_grow_to_4x_8x_and_past_16_bits_as_stress_groups():
    settings = resolve_settings()
    groups = plan_matrix({"batch": 16, "dim": 64}, [], [1], settings)
    by_knobs = {(g.knobs["batch"], g.knobs["dim"]): g for g in groups}
    for knobs in [(16, 256), (16, 512), (64, 64), (128, 64), (16, 2 * 2**16 + 1)]:
        assert by_knobs[knobs].stress and by_knobs[knobs].grows, knobs
    assert not by_knobs[(16, 128)].stress  # 2x keeps the oracle and is timed


def test_stress_sizes_add_one_group_per_knob():
    settings = resolve_settings()
    groups = plan_matrix({"n": 64}, [], [1], settings, stress_sizes={"n": 100_000})
    assert [g.stress for g in groups if g.knobs["n"] == 100_000] == [True]


def test_task_value_variants_run_at_the_default_shape_once_each():
    settings = resolve_settings()
    default = plan_matrix({"n": 64}, [], [1, 2], settings, task_values=["ties"])[0]
    task_cells = [v for v in default.variants if v.task_value]
    assert [(v.name, v.seed) for v in task_cells] == [("value:task:ties", 1)]


def test_largest_verified_counts_only_passed_cells():
    from kernelproof.schema import CorrectnessTest, InputVariant, TestOutcome
    from kernelproof.tasks.variants import largest_verified

    def cell(n: int, outcome: TestOutcome) -> CorrectnessTest:
        variant = InputVariant(name=f"shape:n={n}", kind=VariantKind.SHAPE, knobs={"n": n}, seed=1)
        return CorrectnessTest(variant=variant, seed=1, outcome=outcome)

    tests = [
        cell(128, TestOutcome.PASSED),
        cell(512, TestOutcome.FAILED),
        cell(256, TestOutcome.SKIPPED),
    ]
    assert largest_verified(tests, {"n": 64, "m": 3}) == {"n": 128, "m": 3}


def test_production_sizes_are_whole_tiles_but_not_powers_of_two():
    """Issue 25 class 4: next to each knob, the 3 * 2**k above it and the 5 * 2**k below it
    (1536 and 640 next to 1000; 6144 and 2560 next to 4096), compared with the oracle."""
    settings = resolve_settings()
    groups = plan_matrix({"batch": 8, "dim": 4096}, [], [1], settings)
    by_knobs = {(g.knobs["batch"], g.knobs["dim"]): g for g in groups}
    for knobs in [(8, 6144), (8, 2560)]:
        assert not by_knobs[knobs].stress, knobs  # within 2x: the oracle, and timed
    assert (12, 4096) not in by_knobs  # knobs below MIN_PRODUCTION_KNOB get none
    dims = {g.knobs["dim"] for g in plan_matrix({"dim": 1000}, [], [1], settings)}
    assert {1536, 640} <= dims
    # and every one is a whole number of 128-element tiles whose count is no power of two
    assert all((d // 128) & (d // 128 - 1) for d in (1536, 640, 6144, 2560))


def test_the_size_past_16_bits_pins_its_knob():
    settings = resolve_settings()
    groups = plan_matrix({"rows": 8192, "width": 512}, [], [1], settings)
    past = {g.pinned: g.knobs for g in groups if g.pinned is not None}
    assert past == {
        "rows": {"rows": 131073, "width": 512},
        "width": {"rows": 8192, "width": 131073},
    }


def test_sizes_past_24_and_31_bits_are_sized_by_memory():
    settings = resolve_settings()
    groups = plan_matrix(
        {"n": 64}, [], [1], settings, past_24_bits={"n": 2**24 + 1}, past_32_bits=[{"n": 2**31 + 1}]
    )
    sized = [g for g in groups if g.device_sized]
    assert [g.knobs["n"] for g in sized] == [2**24 + 1, 2**31 + 1]
    assert all(g.stress for g in sized)


def test_a_refitted_group_names_every_knob_that_differs():
    settings = resolve_settings()
    groups = plan_matrix({"rows": 8192, "width": 512}, [], [1], settings)
    past = next(g for g in groups if g.pinned == "rows")
    fitted = refitted(past, {"rows": 2 * 2**16 + 1, "width": 64}, groups[0].knobs)
    assert fitted.label == "shape:rows=131073,width=64" and fitted.pinned == "rows"
    assert fitted.variants[0].knobs == {"rows": 131073, "width": 64}
