from tests.support.sessions import env

__all__ = ["env"]
