"""The @pl.program parser: what it accepts, the IR it builds, and file:line:col on rejection."""

from __future__ import annotations

import inspect

import pytest

import pypto.language as pl
from pypto import ir
from pypto.errors import ParserError, PyptoError
from pypto.ir_core.printer import print_program

T = "pl.Tensor[[64, 64], pl.FP32]"


def program_src(
    kernel_body: str,
    params: str = f"a: {T}, out: pl.Out[{T}]",
    orch: str = "        out = self.k(a, out)\n        return out\n",
) -> str:
    return (
        "import pypto.language as pl\n\n@pl.program\nclass P:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def k(self, {params}) -> {T}:\n{kernel_body}"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, a: {T}, out: pl.Out[{T}]) -> {T}:\n{orch}"
    )


GOOD_BODY = (
    "        t = pl.load(a, [0, 0], [64, 64])\n"
    "        out = pl.store(pl.add(t, 1.0), [0, 0], out)\n        return out\n"
)


def parse_error(src: str) -> ParserError:
    with pytest.raises(ParserError) as info:
        pl.parse_program(src, "prog.py")
    return info.value


def test_decorator_turns_class_into_program_with_typed_functions():
    @pl.program
    class Small:
        @pl.function(type=pl.FunctionType.InCore)
        def k(
            self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
        ) -> pl.Tensor[[64, 64], pl.FP32]:
            t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])
            out = pl.store(pl.exp(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
        ) -> pl.Tensor[[64, 64], pl.FP32]:
            out = self.k(a, out)
            return out

    assert isinstance(Small, ir.Program)
    assert list(Small.functions) == ["k", "main"]
    k = Small.functions["k"]
    assert k.func_type is ir.FunctionType.InCore
    assert [(p.var.name, p.direction) for p in k.params] == [("a", "in"), ("out", "out")]
    assert Small.orchestration.name == "main"
    load = k.body[0].value
    assert load.op == "load" and load.type == ir.TileType((64, 64), pl.FP32)


def test_module_constants_resolve_in_shapes_and_loops():
    from examples.tiled_softmax import TiledSoftmax

    k = TiledSoftmax.functions["qk_matmul"]
    assert isinstance(k.body[0], ir.For) and k.body[0].trip_count == 2
    assert k.params[0].var.type.shape == (64, 128)


def test_parse_program_from_source_matches_printed_form():
    prog = pl.parse_program(program_src(GOOD_BODY), "prog.py")
    text = print_program(prog)
    again = pl.parse_program(text, "printed.py")
    assert print_program(again) == text
    assert "out: pl.Tensor[[64, 64], pl.FP32] = pl.store(pl.add(t, 1.0), [0, 0], out)" in text


def test_error_in_decorated_class_names_this_file_and_line():
    with pytest.raises(ParserError) as info:

        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(
                self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
            ) -> pl.Tensor[[64, 64], pl.FP32]:
                t = pl.load(a, [0, 0], [64, 64])
                out = pl.store(pl.softplus(t), [0, 0], out)  # the bad line
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(
                self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
            ) -> pl.Tensor[[64, 64], pl.FP32]:
                out = self.k(a, out)
                return out

    err = info.value
    src_lines, first = inspect.getsourcelines(
        test_error_in_decorated_class_names_this_file_and_line
    )
    bad = next(first + i for i, line in enumerate(src_lines) if "# the bad line" in line)
    assert err.filename == __file__
    assert err.lineno == bad
    assert "unknown op pl.softplus" in str(err)
    assert str(err).startswith(f"{__file__}:{bad}:")


@pytest.mark.parametrize(
    "body, line, col, message",
    [
        (
            ("        t = pl.load(a, [0, 0], [64, 64])\n        u = pl.load(a, [0, 0], [32, 64])\n"
             "        v = pl.add(t, u)\n        return out\n"),
            9,
            13,
            "pl.add shape mismatch: [64, 64] and [32, 64]",
        ),
        (
            ("        t = pl.load(a, [0, 0], [64, 64])\n        while True:\n            pass\n"
             "        return out\n"),
            8,
            9,
            "unsupported statement: While",
        ),
        (
            ("        t = pl.load(a, [0, 0], [64, 64])\n        a = pl.store(t, [0, 0], a)\n"
             "        return out\n"),
            8,
            33,
            "cannot store into input 'a'",
        ),
        ("        t = pl.load(out, [0, 0], [64, 64])\n        return out\n", 7, 21, "pl.InOut"),
        (
            "        t = pl.load(a, [8, 0], [64, 64])\n        return out\n",
            7,
            13,
            "exceeds tensor 'a'",
        ),
        (
            "        t: pl.Tile[[64, 64], pl.FP16] = pl.load(a, [0, 0], [64, 64])\n        return out\n",
            7,
            12,
            "annotation says pl.Tile[[64, 64], pl.FP16]",
        ),
        (
            "        t = pl.load(a, [0, 0], [64, 64])\n        t = pl.row_sum(t)\n        return out\n",
            8,
            9,
            "'t' is pl.Tile[[64, 64], pl.FP32] but is assigned pl.Tile[[64, 1], pl.FP32]",
        ),
        (
            "        t = pl.load(a, [0, 0], [64, 64])\n        return t\n",
            8,
            9,
            "'k' returns pl.Tile",
        ),
        (
            ("        t = pl.load(a, [0, 0], [64, 64])\n        out = pl.store(t, [0, 0], out)\n"
             "        return nope\n"),
            9,
            16,
            "unknown name 'nope'",
        ),
    ],
)
def test_rejections_name_line_and_column(body, line, col, message):
    err = parse_error(program_src(body))
    assert (err.filename, err.lineno, err.col) == ("prog.py", line, col), str(err)
    assert message in err.problem


def test_dtype_mismatch_in_store_and_matmul():
    src = program_src(
        "        t = pl.load(h, [0, 0], [64, 64])\n        out = pl.store(t, [0, 0], out)\n"
        "        return out\n",
        params=f"a: {T}, h: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[{T}]",
    )
    assert "tile dtype FP16 does not match tensor 'out' dtype FP32" in parse_error(src).problem
    src = program_src(
        "        t = pl.load(a, [0, 0], [64, 64])\n        u = pl.load(a, [0, 0], [32, 64])\n"
        "        m = pl.matmul(t, u)\n        return out\n"
    )
    assert "pl.matmul shape mismatch: [64, 64] @ [32, 64]" in parse_error(src).problem


def test_orchestration_rules():
    bad_call = program_src(GOOD_BODY, orch="        out = self.k(a)\n        return out\n")
    assert "takes 2 positional arguments, got 1" in parse_error(bad_call).problem
    tile_op = program_src(GOOD_BODY, orch="        x = pl.exp(a)\n        return out\n")
    assert "call it inside an InCore kernel" in parse_error(tile_op).problem
    no_orch = program_src(GOOD_BODY).split("    @pl.function(type=pl.FunctionType.Orchestration)")[
        0
    ]
    assert "exactly one Orchestration function" in parse_error(no_orch).problem


def test_syntax_error_is_a_parser_error_with_position():
    err = parse_error("@pl.program\nclass P:\n    def k(self:\n")
    assert err.filename == "prog.py" and err.lineno == 3


def test_loop_range_must_be_compile_time_and_positive():
    body = (
        "        for i in pl.range(0):\n            t = pl.load(a, [0, 0], [64, 64])\n"
        "        return out\n"
    )
    assert "trip count must be positive" in parse_error(program_src(body)).problem
    body = (
        "        for i in range(2):\n            t = pl.load(a, [0, 0], [64, 64])\n"
        "        return out\n"
    )
    assert "pl.range" in parse_error(program_src(body)).problem


def test_dsl_ops_outside_a_program_raise():
    with pytest.raises(PyptoError, match="only has meaning inside"):
        pl.add(1, 2)


def test_dtype_names_match_numpy():
    assert (pl.FP32.numpy, pl.FP16.numpy, pl.INT32.numpy) == ("float32", "float16", "int32")


def test_module_alias_other_than_pl_is_recognised():
    import pypto.language as dsl

    @dsl.program
    class Aliased:
        @dsl.function(type=dsl.FunctionType.InCore)
        def k(self, a: dsl.Tensor[[8, 8], dsl.INT32],
              out: dsl.Out[dsl.Tensor[[8, 8], dsl.INT32]]) -> dsl.Tensor[[8, 8], dsl.INT32]:
            out = dsl.store(dsl.mul(dsl.load(a, [0, 0], [8, 8]), 3), [0, 0], out)
            return out

        @dsl.function(type=dsl.FunctionType.Orchestration)
        def main(self, a: dsl.Tensor[[8, 8], dsl.INT32],
                 out: dsl.Out[dsl.Tensor[[8, 8], dsl.INT32]]) -> dsl.Tensor[[8, 8], dsl.INT32]:
            out = self.k(a, out)
            return out

    assert Aliased.functions["k"].params[0].var.type.dtype is pl.INT32


def test_tile_parameters_and_float_scalar_on_int_tiles_are_rejected():
    err = parse_error(program_src(GOOD_BODY, params=f"a: pl.Tile[[64, 64], pl.FP32], out: pl.Out[{T}]"))
    assert "parameters are tensors or scalars, not tiles" in err.problem
    src = program_src("        t = pl.load(a, [0, 0], [8, 8])\n        u = pl.add(t, 0.5)\n"
                      "        return out\n",
                      params=f"a: pl.Tensor[[8, 8], pl.INT32], out: pl.Out[{T}]")
    assert "0.5 is not an INT32 value" in parse_error(src).problem


def test_a_kernel_call_takes_simplers_timing_slot_and_nothing_else():
    tagged = program_src(GOOD_BODY, orch="        out = self.k(a, out, timing_slot=15)\n"
                                          "        return out\n")
    prog = pl.parse_program(tagged, "prog.py")
    assert "self.k(a, out, timing_slot=15)" in print_program(prog)
    again = pl.parse_program(print_program(prog), "printed.py")      # printed form parses
    assert print_program(again) == print_program(prog)
    for value, what in (("16", "0-15"), ("-1", "0-15"), ("n", "0-15"), ("1.0", "0-15")):
        src = program_src(GOOD_BODY, orch=f"        n = 1\n        out = self.k(a, out, "
                                          f"timing_slot={value})\n        return out\n")
        assert f"timing_slot must be an integer literal {what}" in parse_error(src).problem
    other = program_src(GOOD_BODY, orch="        out = self.k(a, out, slot=1)\n"
                                         "        return out\n")
    assert "unknown keyword 'slot'" in parse_error(other).problem
