"""The reproductions behind ``lowlat reproduce``: one module per experiment, each holding only its
experiment definition, tables and figures (:mod:`.zhuge`, :mod:`.scone`, :mod:`.satellite`), and
:mod:`.common` for what they share (trace families, the process pool, the results folder)."""
