"""The tool-making pipeline: data collector, tool-maker, reflector, sandbox test-repair loop,
registration and the label-free variant (the tool-making paper, section 3.1 and appendix C)."""
