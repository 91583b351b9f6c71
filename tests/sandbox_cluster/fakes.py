"""The fake sandboxes now ship as `sandbox_cluster.testing`; this module re-exports them."""

from sandbox_cluster.testing import FakePool, MisbehavingNode, ScriptedPool

__all__ = ["FakePool", "MisbehavingNode", "ScriptedPool"]
