"""Contact generation through coal: broad phase on AABBs, narrow phase with contact patches
(several points per box-box or box-plane contact), contact frames and per-pair friction."""
from .contacts import CollisionWorld, ContactSet, detect_then_match, match_contacts, match_indices, match_previous

__all__ = ["CollisionWorld", "ContactSet", "detect_then_match", "match_contacts", "match_indices", "match_previous"]
