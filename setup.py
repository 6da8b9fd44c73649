"""Build script: compiles the Cython kernels, with OpenMP when the compiler has it.

Environment variables
---------------------
EMBKIT_NATIVE=1
    Add ``-march=native`` (local benchmarks only: the binary then runs only on this CPU family).
EMBKIT_NO_OPENMP=1
    Build without OpenMP even if the compiler supports it (the passes that use it, top-k scoring and the cluster's
    passes over the rows, then run on one thread; training runs on Python threads either way).
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

# Reassociation lets gcc vectorise dot products; scoped to the kernels only.
FAST_MATH = ["-fno-math-errno", "-fassociative-math", "-fno-signed-zeros", "-fno-trapping-math",
             "-ffp-contract=fast"]


def _compiler_has_openmp(compiler_cmd):
    """Return True if ``compiler_cmd`` compiles and links a tiny OpenMP program."""
    src = "#include <omp.h>\nint main(void){ return omp_get_max_threads() > 0 ? 0 : 1; }\n"
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "probe.c")
        with open(path, "w") as fh:
            fh.write(src)
        cmd = list(compiler_cmd) + ["-fopenmp", path, "-o", os.path.join(tmp, "probe")]
        res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return res.returncode == 0
    except OSError:
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class BuildExt(build_ext):
    """build_ext that probes OpenMP and sets the kernel flags."""

    def build_extensions(self):
        compiler = getattr(self.compiler, "compiler_so", None) or ["cc"]
        is_msvc = self.compiler.compiler_type == "msvc"
        use_omp = False
        if not is_msvc and not os.environ.get("EMBKIT_NO_OPENMP"):
            use_omp = _compiler_has_openmp([compiler[0]])
            if not use_omp:
                warnings.warn("embkit: the C compiler has no OpenMP; building without it "
                              "(top-k scoring and the cluster's passes over the rows run on one thread).")
        for ext in self.extensions:
            if not is_msvc:
                ext.extra_compile_args += ["-O3"] + FAST_MATH
                if os.environ.get("EMBKIT_NATIVE"):
                    ext.extra_compile_args.append("-march=native")
                if use_omp:
                    ext.extra_compile_args.append("-fopenmp")
                    ext.extra_link_args.append("-fopenmp")
        print("embkit: OpenMP %s" % ("enabled" if use_omp else "disabled"), file=sys.stderr)
        super().build_extensions()


#: every ``embkit/_kernels/*.pyx`` is one extension module of the same name
KERNELS = sorted(os.path.splitext(os.path.basename(path))[0] for path in glob.glob("embkit/_kernels/*.pyx"))

extensions = [
    Extension(
        "embkit._kernels.%s" % name,
        ["embkit/_kernels/%s.pyx" % name],
        include_dirs=[np.get_include(), "embkit/_kernels"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in KERNELS
]

setup(
    packages=find_packages(include=["embkit", "embkit.*"]),
    package_data={"embkit._kernels": ["*.pxd", "*.h"], "embkit.data": ["*.txt", "*.gz", "*.md"]},
    ext_modules=cythonize(extensions, language_level=3,
                          compiler_directives={"boundscheck": False, "wraparound": False,
                                               "cdivision": True, "initializedcheck": False}),
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
)
