"""The population a hybrid estimate reads: one machine and one human value per run and unit."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class UnitTable:
    task: str
    measure: str
    unit: str
    keys: list[str]
    runs: list[str]
    machine: np.ndarray
    human: np.ndarray
    notes: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.keys)

    def labelled_units(self) -> np.ndarray:
        """Units with a human value for at least one run."""
        return np.asarray(~np.all(np.isnan(self.human), axis=0))

    def complete(self) -> UnitTable:
        """Only the units with both values for every run: the simulation's population."""
        keep = ~np.any(np.isnan(self.human) | np.isnan(self.machine), axis=0)
        return UnitTable(
            task=self.task,
            measure=self.measure,
            unit=self.unit,
            keys=[k for k, ok in zip(self.keys, keep, strict=True) if ok],
            runs=self.runs,
            machine=self.machine[:, keep],
            human=self.human[:, keep],
            notes=list(self.notes),
        )
