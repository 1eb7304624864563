from enum import Enum

from pydantic import BaseModel


class Direction(str,Enum):
    left="left"
    right="right"
    up="up"

class NameSource(BaseModel):
    name: str
    direction : Direction
