"""pip's build of the flowscope module (pyproject.toml): configures the project's CMake with the engine and
the module only (no GUI, no tests), builds the _flowscope target, and installs the package the build tree
holds (python/flowscope: the extension, the Python files, the stubs and the presets)."""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # One CMake build tree beside the source, reused by later installs (build-pip/; the Python build's files
        # go in its setuptools/ folder).
        build = os.path.join(ROOT, "build-pip")
        args = [f"-DPython3_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release", "-DFLOWSCOPE_BUILD_GUI=OFF",
                "-DFLOWSCOPE_BUILD_TESTS=OFF", "-DFLOWSCOPE_BUILD_PYTHON=ON"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        if shutil.which("ccache"):
            args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        subprocess.run(["cmake", "-S", ROOT, "-B", build, *args], check=True)
        subprocess.run(["cmake", "--build", build, "--target", "_flowscope", "-j", str(os.cpu_count() or 2)],
                       check=True)
        package = os.path.join(build, "python", "flowscope")
        if not os.path.isdir(package):
            sys.exit("the flowscope module was not built: CMake did not find pybind11 or python3-dev (see above)")
        target = os.path.join(os.path.abspath(self.build_lib), "flowscope")
        shutil.copytree(package, target, dirs_exist_ok=True)


setup(
    packages=[],
    ext_modules=[Extension("flowscope._flowscope", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-pip/setuptools"}},  # not build/, the build tree of scripts/dev.sh
    zip_safe=False,
)
