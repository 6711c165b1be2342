"""The compiled parts (the native reader of Chrome/Kineto traces, template filling for the trace
writer), built where a C compiler exists.

Everything else is in pyproject.toml. Both are optional: without a compiler the install goes
on (one line says so) and their pure-Python twins do the work, with the same results.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuild(build_ext):
    """Builds what it can; what it cannot (no compiler, no Python headers) is said in one line."""

    def run(self) -> None:
        self.failed: list[str] = []
        try:
            super().run()
        except Exception as e:
            self.failed.append(str(e))
        if self.failed:
            print(
                f"xpu_profiler: native reader not built ({self.failed[0].splitlines()[0][:200]}); "
                "the pure-Python reader reads every trace"
            )

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:
            self.failed.append(f"{ext.name}: {e}")


setup(
    ext_modules=[
        Extension(
            "xpu_profiler.readers.kineto._scan",
            ["xpu_profiler/readers/kineto/_scan.c"],
            optional=True,
        ),
        Extension("xpu_profiler.core._fill", ["xpu_profiler/core/_fill.c"], optional=True),
        Extension("xpu_profiler.core._nest", ["xpu_profiler/core/_nest.c"], optional=True),
    ],
    cmdclass={"build_ext": OptionalBuild},
)
