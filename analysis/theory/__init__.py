"""Closed-form theory: the formulas and bounds each probe compares its measurements with (float64), one module per
probe's subject, each tested against enumeration, Monte Carlo or brute force in tests/test_theory_*.py."""
