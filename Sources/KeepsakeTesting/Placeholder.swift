import Keepsake
