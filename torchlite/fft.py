"""torchlite.fft: torch.fft's discrete Fourier transforms (fft, ifft, rfft, irfft, hfft,
ihfft and their 2-d and n-d forms; fftfreq, rfftfreq, fftshift, ifftshift), differentiable,
on torchlite's own FFT kernel (torchlite/_core/fft.pyx; see torchlite/_ops/fft.py)."""
from ._ops.fft import (fft, ifft, rfft, irfft, hfft, ihfft, fft2, ifft2, rfft2, irfft2,
                            hfft2, ihfft2, fftn, ifftn, rfftn, irfftn, hfftn, ihfftn, fftfreq,
                            rfftfreq, fftshift, ifftshift)

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
