"""The reproductions behind ``lowlat reproduce``: one module per experiment, each holding only its
experiment definition, tables and figures (:mod:`.zhuge`, :mod:`.scone`, :mod:`.satellite`), and
:mod:`.common` for what they share (trace families, the results folder, and :func:`.common.run_grid`,
which runs a list of runs as a sweep on the one runner of :mod:`lowlat.sweep`: resumable, failures
recorded, local processes or Ray)."""
