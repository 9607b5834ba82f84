"""torchlite.profiler: torch.profiler's API (profile, record_function, schedule,
ProfilerActivity, ProfilerAction, tensorboard_trace_handler; key_averages().table(...),
export_chrome_trace).  See _profile.py for what is timed and how."""
from __future__ import annotations

from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._profile import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
