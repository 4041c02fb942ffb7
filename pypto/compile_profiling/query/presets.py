"""Named ready-made queries over a run's tables (`pypto-profile query --preset NAME`).

Each is one SQL statement over the views of `tables` (docs/tables.md). Device times come
from the records' own cycles (`args.start_cycles` / `end_cycles` and the capture's clock
frequency), as `pypto-profile kernels` computes them, not from the placed nanoseconds; busy
time is the union of a core's kernel bars, the way the utilisation counters see it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AICORE", "PRESETS", "STAGE_PATHS", "Preset", "preset_sql",
           "slice_arg_fields"]



@dataclass(frozen=True)
class Preset:
    name: str
    help: str
    needs: tuple[str, ...]        # slice arg fields it reads
    sql: str


# the AICore kernel bars with their capture, core and device time (ns from cycles)
AICORE = """
aicore as (
  select s.rank, p.capture_id, s.args.core_id as core_id, s.args.core_type as core_type,
         s.args.task_id as task_id, s.args.kernel_id as kernel_id, s.ts, s.ts + s.dur as te,
         (s.args.end_cycles - s.args.start_cycles) * 1e9 / c.clock_freq_hz as device_ns
  from slice s join thread t on s.track_id = t.utid join process p on t.upid = p.upid
  join capture c on c.id = p.capture_id
  where s.category = 'aicore')"""

# the union of each core's bars: islands of overlapping bars (gaps between them are idle)
_ISLANDS = AICORE + """,
ordered as (
  select *, max(te) over (partition by capture_id, core_id order by ts, te
                          rows between unbounded preceding and 1 preceding) as prev_end
  from aicore),
grouped as (
  select *, sum(case when prev_end is null or ts > prev_end then 1 else 0 end)
            over (partition by capture_id, core_id order by ts, te rows unbounded preceding)
            as island
  from ordered),
islands as (
  select rank, capture_id, core_id, any_value(core_type) as core_type, island,
         min(ts) as ts, max(te) as te
  from grouped group by rank, capture_id, core_id, island)"""

KERNELS = Preset("kernels", "kernels by device time (as pypto-profile kernels): tasks, AICore "
                 "runs, core type, total / mean / max device time",
                 ("core_id", "core_type", "task_id", "kernel_id", "start_cycles",
                  "end_cycles"), f"""
with {AICORE.strip()},
named as (
  select coalesce(k.name, '(unknown kernel)') as kernel, a.*
  from aicore a left join kernel k on k.capture_id = a.capture_id and k.kernel_id = a.kernel_id)
select kernel, count(distinct (capture_id, task_id)) as tasks, count(*) as runs,
       string_agg(distinct core_type, '+' order by core_type) as core_type,
       sum(device_ns) / 1e3 as device_total_us, sum(device_ns) / count(*) / 1e3 as device_mean_us,
       max(device_ns) / 1e3 as device_max_us
from named group by kernel order by device_total_us desc, kernel""")

MAKESPAN = Preset("makespan", "per-rank makespan (first to last kernel on its AICores), busy "
                  "share of its cores, and how far each rank is behind the fastest and the "
                  "median", ("core_id", "core_type", "task_id", "kernel_id", "start_cycles",
                             "end_cycles"), f"""
with {_ISLANDS.strip()},
per_rank as (
  select i.rank, min(i.ts) as first_ns, max(i.te) as last_ns, sum(i.te - i.ts) as busy_ns,
         count(distinct (i.capture_id, i.core_id)) as cores,
         string_agg(distinct c.label, ',' order by c.label) as captures
  from islands i join capture c on c.id = i.capture_id group by i.rank),
tasks as (select rank, count(distinct (capture_id, task_id)) as tasks from aicore group by rank),
spans as (
  select p.*, t.tasks, last_ns - first_ns as makespan_ns from per_rank p join tasks t
  on p.rank is not distinct from t.rank)
select rank, captures, tasks, cores, makespan_ns / 1e6 as makespan_ms,
       busy_ns / (makespan_ns * cores) as busy_share,
       (makespan_ns - min(makespan_ns) over ()) / 1e6 as behind_fastest_ms,
       100.0 * (makespan_ns / median(makespan_ns) over () - 1) as vs_median_pct
from spans order by makespan_ns desc, rank""")

IDLE_GAPS = Preset("idle-gaps", "idle gaps per core: between the core's first and last kernel, "
                   "the gaps where it ran none (count, total, largest, share of its span)",
                   ("core_id", "core_type", "task_id", "kernel_id", "start_cycles",
                    "end_cycles"), f"""
with {_ISLANDS.strip()},
gaps as (
  select *, lead(ts) over (partition by capture_id, core_id order by ts) - te as gap_ns
  from islands)
select g.rank, c.label as capture, upper(g.core_type) || '_' || g.core_id as core,
       count(gap_ns) as gaps, coalesce(sum(gap_ns), 0) / 1e3 as idle_us,
       coalesce(max(gap_ns), 0) / 1e3 as largest_gap_us,
       coalesce(sum(gap_ns), 0) / (max(te) - min(ts)) as idle_share
from gaps g join capture c on c.id = g.capture_id
group by g.rank, c.label, g.capture_id, g.core_type, g.core_id
order by idle_us desc, g.rank, capture, g.core_id""")

# every compile stage (the slices of the compile processes: those drawn from no capture,
# less a run log's spans on them) with its path from the top (`args.path` where our
# trace.json gave it, else the names of the stages it nests in), as pypto-profile's stage
# tree has them
STAGE_PATHS = """
st as (
  select s.id, s.ts, s.dur, s.ts + s.dur as te, s.name, s.category, s.parent_id,
         {path} as given_path, {seconds} as seconds
  from slice s join thread t on s.track_id = t.utid join process p on t.upid = p.upid
  where p.capture_id is null and s.category not like 'simpler_host%'),
tree(id, path) as (
  select id, coalesce(given_path, name) from st
  where parent_id is null or parent_id not in (select id from st)
  union all
  select c.id, coalesce(c.given_path, t.path || '/' || c.name)
  from st c join tree t on c.parent_id = t.id),
stage as (select st.*, tree.path from st join tree using (id))"""

SLOWEST_STAGES = Preset("slowest-stages", "compile stages by self time (their time not covered "
                        "by their child stages, as pypto-profile show lists them)", (), f"""
with recursive {STAGE_PATHS.strip()},
kids as (
  select p.id as parent, greatest(c.ts, p.ts) as ts, least(c.te, p.te) as te
  from stage p join stage c on c.path = p.path || '/' || c.name
  and c.ts >= p.ts and c.ts <= p.te and c.id <> p.id),
ordered as (
  select *, max(te) over (partition by parent order by ts, te
                          rows between unbounded preceding and 1 preceding) as prev_end
  from kids where te > ts),
grouped as (
  select *, sum(case when prev_end is null or ts > prev_end then 1 else 0 end)
            over (partition by parent order by ts, te rows unbounded preceding) as island
  from ordered),
covered as (
  select parent, sum(len) as covered_ns from (
    select parent, island, max(te) - min(ts) as len from grouped group by parent, island)
  group by parent)
select s.path, (s.dur - coalesce(k.covered_ns, 0)) / 1e6 as self_ms, s.dur / 1e6 as total_ms,
       s.dur - coalesce(k.covered_ns, 0) as self_ns
from stage s left join covered k on k.parent = s.id
order by self_ns desc, s.path""")

PRESETS = {p.name: p for p in (KERNELS, MAKESPAN, IDLE_GAPS, SLOWEST_STAGES)}


def slice_arg_fields(con) -> set[str]:
    """The field names of `slice.args` in this run (none when no slice has args)."""
    schema = con.sql("select * from slice limit 0").to_arrow_table().schema
    if "args" not in schema.names:
        return set()
    return {f.name for f in schema.field("args").type}


def preset_sql(con, preset: Preset) -> str | None:
    """The preset's SQL for this run, or None when its slices lack the args it reads
    (e.g. kernels of a run without device records: nothing to report)."""
    fields = slice_arg_fields(con)
    if not set(preset.needs) <= fields:
        return None
    return with_path(preset.sql, fields)


def with_path(sql: str, fields: set[str]) -> str:
    """`sql` with the stage placeholders bound to `args.path` / `args.seconds` (a
    durations-only report's stages) when slices have them, else null."""
    return sql.replace("{path}", "s.args.path" if "path" in fields else "null").replace(
        "{seconds}", "s.args.seconds" if "seconds" in fields else "null")
