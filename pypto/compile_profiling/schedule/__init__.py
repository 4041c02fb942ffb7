"""The AICPU scheduler's rules as a discrete-event model: one model for the simulated device's
modelled time (`pypto.runtime`) and for the replay of a captured run (`analysis.replay`).

- `rules`: the scheduler's rules with fixed costs per step (`ScheduleCosts`), event by event
  (`simulate`): what the simulated device runs in modelled time, and what a capture of it
  is replayed with;
- `calibrated`: a capture whose rules are not known exactly (a real device, Simpler's CPU
  simulator) replayed on its own observed latencies and decisions.

It imports nothing of the package: the device and the analysis both stand on it.
"""
