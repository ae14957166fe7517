import pytest

from pdx.contract.errors import WorkloadError
from pdx.domain.workload import TestSpec, build_workload, parse_int_list


@pytest.mark.parametrize(
    "text, expected",
    [
        ("512", [512]),
        ("512,1024", [512, 1024]),
        ("128-512+128", [128, 256, 384, 512]),
        ("128-1024*2", [128, 256, 512, 1024]),
        ("1-3", [1, 2, 3]),
        ("0", [0]),
    ],
)
def test_llama_bench_list_syntax(text, expected):
    assert parse_int_list(text, "-p") == expected


@pytest.mark.parametrize("text", ["abc", "-1", "1,,2", "5-1", "1-10*1", "1.5", "1-9+0"])
def test_invalid_lists_name_the_flag(text):
    with pytest.raises(WorkloadError, match="^-p: "):
        parse_int_list(text, "-p")


def test_matrix_order_and_names_follow_llama_bench():
    workload = build_workload(n_prompt="512,1024", n_gen="128", prompt_gen="512,128", depth="0,4096", batch="1,8")
    names = [t.name for t in workload.tests]
    assert names[:4] == ["pp512", "pp1024", "tg128", "pp512+tg128"]
    assert names[4:8] == ["pp512@d4096", "pp1024@d4096", "tg128@d4096", "pp512+tg128@d4096"]
    assert names[8] == "pp512/b8" and names[-1] == "pp512+tg128@d4096/b8"
    assert len(names) == 16


def test_zero_disables_a_kind_and_no_tests_is_an_error():
    assert [t.name for t in build_workload(n_prompt="0", n_gen="64").tests] == ["tg64"]
    with pytest.raises(WorkloadError, match="no tests"):
        build_workload(n_prompt="0", n_gen="0")


@pytest.mark.parametrize("name", ["pp512", "tg128", "pp512+tg128", "tg128@d4096", "pp512+tg128@d4096/b8"])
def test_names_round_trip(name):
    test = TestSpec.parse(name)
    assert test.name == name


def test_spec_properties():
    test = TestSpec(512, 128, depth=1024, batch=4)
    assert test.kind == "pg"
    assert test.tokens == 640 * 4
    assert test.context == 1024 + 640
    with pytest.raises(WorkloadError):
        TestSpec.parse("pp")
    with pytest.raises(WorkloadError):
        TestSpec(0, 0)
    with pytest.raises(WorkloadError):
        TestSpec(1, 0, batch=0)


def test_workload_round_trips_through_its_dict():
    workload = build_workload(n_prompt="64", n_gen="16", depth="0,32", repetitions=3, warmup=2, seed=7)
    assert type(workload).from_dict(workload.to_dict()) == workload
