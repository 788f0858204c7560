"""Pictures of simulations: interactive 3D replays as one self-contained HTML file (meshcat's
viewer), trajectory plots (matplotlib), and the report as a web page."""
from .replay import ReplayData, ReplayRecorder, read_replay, replay_html, write_replay

__all__ = ["ReplayData", "ReplayRecorder", "read_replay", "replay_html", "write_replay"]
