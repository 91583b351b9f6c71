"""The staged, resumable DMC-Optim builder behind `jaxopt-rl data build` (see `build`)."""

from jaxopt_rl.data.builder.build import BuildReport, build, default_stages, load_source
from jaxopt_rl.data.builder.config import BuildConfig

__all__ = ["BuildConfig", "BuildReport", "build", "default_stages", "load_source"]
