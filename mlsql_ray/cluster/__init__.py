"""Ray plumbing: the session's link to Ray (``link``: an embedded instance or a cluster), the warm
pool of actors kept between runs (``warm``), Ray's log lines made quiet (``quiet``), and the one
module that touches Ray's private API (``ray_internals``)."""
