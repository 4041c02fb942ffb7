"""The IR itself: typed nodes, their printer and visitors, the passes and the manager that
runs them. Below the language, codegen and the runtime; `pypto.ir` hands it on to users."""
