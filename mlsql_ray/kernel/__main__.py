"""``python -m mlsql_ray.kernel -f CONNECTION_FILE`` runs the kernel (Jupyter does this);
``python -m mlsql_ray.kernel install [...]`` installs its kernelspec."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "install":
    from .install import main

    sys.exit(main(sys.argv[2:]))

from ipykernel.kernelapp import IPKernelApp

from .kernel import MLSQLKernel


class MLSQLKernelApp(IPKernelApp):
    """ipykernel's app, stopped in an order that cannot hang or abort.

    A ``shutdown_request`` is answered on the control thread, which stops the main loop and then,
    still on the control thread, flushes stdout and publishes an ``idle`` status through the IOPub
    thread. At exit the main thread stops the IOPub thread (an ``atexit`` hook) without waiting for
    the control thread, so that flush can wait forever (Jupyter then SIGTERMs the kernel) or the
    send can hit a closed socket (SIGABRT). Our ``do_shutdown`` returns fast enough to lose the race
    nearly every time under jupyter_client 8.10, which interrupts before it asks for a shutdown
    (ipykernel PR #1518 handles only the closed-socket half). So the control thread is let finish
    as soon as the main loop returns, before any exit hook runs."""

    def start(self):
        try:
            super().start()
        finally:
            control = self.control_thread
            if control is not None and control.is_alive():
                control.stop()
                control.join(timeout=10)


MLSQLKernelApp.launch_instance(kernel_class=MLSQLKernel)
