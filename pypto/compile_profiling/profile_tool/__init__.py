"""What `pypto-profile` does with profiles: compare them (`diff`), draw them (`html`), put
each kernel's compile cost beside its device cost (`kernels`), and serve a trace to the
Perfetto UI (`server`, `perfetto_ui`)."""
