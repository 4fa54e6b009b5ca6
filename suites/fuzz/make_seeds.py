#!/usr/bin/env python3
"""Writes the hand-made hostile seeds of the JSON and rename-map fuzz targets
(suites/fuzz/seeds/<target>/), one per class of bad input: non-finite or out-of-range numbers,
NUL or non-UTF-8 text, duplicate keys, wrong types, deep nesting, unknown names. The HDF5 targets
generate theirs (suites/fuzz/fuzz_inputs.cpp, write_seeds); scripts/fuzz.sh adds the project's
own valid files. Run from anywhere: python3 suites/fuzz/make_seeds.py"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, text):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)


def run(**kw):
    r = {"name": "adamw/4096/manual_time", "run_name": "adamw/4096/manual_time", "run_type": "iteration",
         "repetitions": 3, "real_time": 1.5, "cpu_time": 1.4, "time_unit": "ms"}
    r.update(kw)
    return r


def bench(*runs):
    return json.dumps({"context": {"date": "2026-01-01", "library_build_type": "release"}, "benchmarks": list(runs)})


DEEP = 30000  # nesting that a recursive walk of the document cannot survive

# --bench-json / --external-timing
put("bench_json", "negative_real_time.json", bench(run(real_time=-1.349)))
put("bench_json", "overflow_1e999.json", bench(run()).replace("1.5", "1e999"))
put("bench_json", "duplicate_key.json", '{"benchmarks": [{"name": "a", "real_time": 1, "name": "b"}]}')
put("bench_json", "name_nul.json", bench(run(name="a\u0000b", run_name="a\u0000b")))
put("bench_json", "name_dot.json", bench(run(name=".", run_name=".")))
put("bench_json", "error_occurred_string.json", bench(run(error_occurred="yes", error_message="x")))
put("bench_json", "error_run.json", bench(run(error_occurred=True, error_message="out of memory"), run(name="b", run_name="b")))
put("bench_json", "aggregates_only.json", bench(run(run_type="aggregate", aggregate_name="median"),
                                                run(run_type="aggregate", aggregate_name="mean")))
put("bench_json", "unit_overflow.json", bench(run(real_time=1e300, time_unit="s")))
put("bench_json", "deep_nesting.json", '{"benchmarks": ' + "[" * DEEP + "]" * DEEP + "}")
long_run = run(name="forge/" + "a" * 60000 + "/1x2x3")
del long_run["run_name"]
put("bench_json", "long_name.json", bench(long_run))
put("bench_json", "error_message_nul.json", bench(run(error_occurred=True, error_message="CUDA\u0000error")))
put("bench_json", "not_utf8.json", b'{"benchmarks": [{"name": "\xff\xfe", "real_time": 1}]}')

# --model-step
with open(os.path.join(HERE, "..", "..", "docs", "model_step", "json", "capacity_fused_bf16.json")) as f:
    cap = json.load(f)
cap.pop("attempts")
def step(**kw):
    d = dict(cap)
    d.update(kw)
    return json.dumps(d)
put("model_step_json", "capacity_small.json", step())
put("model_step_json", "layers_negative.json", step(layers=-3))
put("model_step_json", "layers_1e300.json", step(layers=1e300))
put("model_step_json", "model_unknown.json", step(model="gpt5"))
put("model_step_json", "update_unknown.json", step(update="sideways"))
put("model_step_json", "config_slash.json", step(config="a/b"))
put("model_step_json", "config_nul.json", step(config="a\u0000b"))
put("model_step_json", "config_deep.json", step(config="@").replace('"@"', "[" * DEEP + "]" * DEEP))
put("model_step_json", "duplicate_status.json", step().replace('"status": "ok"', '"status": "failed", "status": "ok"'))
put("model_step_json", "tag_peaks_number.json", step(capacity_max_tried=None).replace('"capacity_max_tried": null, ', "")
    .replace("{", '{"peak_bytes": 1, "median_ms": 2, "tag_peaks": 5, "timeline": [7], ', 1))

# --external-model
with open(os.path.join(HERE, "..", "..", "docs", "model_step", "json", "torch_fused_qwen14b.json")) as f:
    tm = json.load(f)
def model(**kw):
    d = dict(tm)
    d.update(kw)
    return json.dumps(d)
put("model_bench_json", "torch_small.json", model())
put("model_bench_json", "model_step_as_external.json", step())
put("model_bench_json", "ok_without_peak.json", model(peak_bytes=None))
put("model_bench_json", "config_slash.json", model(config="torch/fused"))
put("model_bench_json", "config_dots.json", model(config="..", model="tiny").replace('"model": "tiny"', '"model": "."'))
put("model_bench_json", "error_nul.json", model(status="failed", error="CUDA\u0000oom"))
put("model_bench_json", "device_deep.json", model(device="@").replace('"@"', "[" * DEEP + "]" * DEEP))
put("model_bench_json", "step_ms_negative.json", model(step_ms=[1.0, -2.0]))
put("model_bench_json", "layers_float.json", model(layers=32.5))

# --convergence-run: a short INT8 run with a trace, from the study's seed-1 INT8 run
with open(os.path.join(HERE, "..", "..", "docs", "model_step", "convergence", "json", "h_fused_int8_master_s1.json")) as f:
    conv = json.load(f)
conv.update(steps=4, train_loss=[8.4, 7.9, None, None], eval_steps=[0, 2, 4], eval_loss=[8.4, 7.5, None],
            step_digests=conv["step_digests"][:4], nonfinite_losses=3,
            trace={"max_abs_update": [0.001, 40.0, None], "max_update_param": ["a", "b", "b"],
                   "v_zero": [5, 300, 900], "v_zero_m_nonzero": [1, 200, 800]})
def convergence(**kw):
    d = dict(conv)
    d.update(kw)
    return json.dumps(d)
put("convergence_run_json", "int8_traced.json", convergence())
put("convergence_run_json", "trace_longer_than_steps.json",
    convergence(trace=dict(conv["trace"], max_abs_update=[1.0] * 5, max_update_param=["a"] * 5, v_zero=[1] * 5,
                           v_zero_m_nonzero=[1] * 5)))
put("convergence_run_json", "trace_m_above_v.json", convergence(trace=dict(conv["trace"], v_zero_m_nonzero=[9, 900, 901])))
put("convergence_run_json", "trace_nan_text.json", convergence().replace('"max_abs_update": [0.001', '"max_abs_update": [NaN'))
put("convergence_run_json", "steps_1e300.json", convergence(steps=1e300))
put("convergence_run_json", "config_nul.json", convergence(config="a\u0000b"))
put("convergence_run_json", "loss_deep.json", convergence(train_loss="@").replace('"@"', "[" * DEEP + "]" * DEEP))

# forge-verify diff --rename-map
put("rename_map", "valid.txt", "# deliberate\nclaim alpha renamed\ncase c1 'c one'\ncheck exact \"exact two\"\n"
    "metric_name err error\ndataset curve curve2\nattr rule rule2\n")
put("rename_map", "swap.txt", "claim alpha beta\nclaim beta alpha\n")
put("rename_map", "unterminated_quote.txt", "claim 'alpha renamed\n")
put("rename_map", "two_words.txt", "claim alpha\n")
put("rename_map", "unknown_kind.txt", "colour a b\n")
put("rename_map", "duplicate.txt", "claim alpha x\nclaim alpha y\n")
put("rename_map", "collide.txt", "case c1 c2\n")
put("rename_map", "stale.txt", "case nothing_here x\n")
put("rename_map", "nul_and_slash.txt", b"claim alpha a\x00b\ncheck exact 'x/y'\n")
put("rename_map", "long_line.txt", "claim " + "a" * 20000 + " b\n")
