"""The native reader of Chrome/Kineto traces, built where a C compiler exists.

Everything else is in pyproject.toml. The extension is optional: without a compiler the
install goes on (one line says so) and the pure-Python reader reads every trace.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuild(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler, no Python headers: the pure-Python reader
            print(f"xpu_profiler: native reader not built ({e}); the pure-Python reader reads every trace")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:
            print(f"xpu_profiler: native reader not built ({e}); the pure-Python reader reads every trace")


setup(
    ext_modules=[
        Extension(
            "xpu_profiler.readers.kineto._scan",
            ["xpu_profiler/readers/kineto/_scan.c"],
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuild},
)
