"""``python -m mlsql_ray.kernel -f CONNECTION_FILE`` runs the kernel (Jupyter does this);
``python -m mlsql_ray.kernel install [...]`` installs its kernelspec."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "install":
    from .install import main

    sys.exit(main(sys.argv[2:]))

from ipykernel.kernelapp import IPKernelApp

from .kernel import MLSQLKernel

IPKernelApp.launch_instance(kernel_class=MLSQLKernel)
