"""torch.distributions.studentT's name (StudentT lives in student_t.py)."""
from .student_t import StudentT

__all__ = ["StudentT"]
