"""What `pypto-profile` does with profiles beyond showing them: compare them (`diff`), draw
them as one HTML page (`html`), and put each kernel's compile cost beside its device cost
(`kernels`)."""
